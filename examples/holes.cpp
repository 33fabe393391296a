#include <vector>
#include <string>
using namespace std;

// Three places are unfinished; holefill fills each so the file is a valid program again.
int count_words(const string& text) {
    int count = 0;
    bool in_word = false;
    for (char c : text) {
        if (c == ' ' <|hole|>
            in_word = false;
        } else if (!in_word) {
            in_word = true;
            count<|hole|>;
        }
    }
    return <|hole|>
}
