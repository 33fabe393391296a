"""Published pass@1 figures of FIM models on the benchmarks the bench runs, with their sources.

Only numbers read in the cited tables; nothing here is measured by holefill. The protocols
differ from ours (sampling temperature, samples per task, prompt format, the C++ grammar the
paper used), so they place our numbers, they do not rank them.
"""

from __future__ import annotations

from dataclasses import dataclass

FIM_PAPER = ("Bavarian et al. 2022, *Efficient Training of Language Models to Fill in the "
             "Middle* (arXiv:2207.14255), Appendix G, Table 4: SPM prompts, temperature 0.2, "
             "100 samples per task; the InCoder row is InCoder's own report")
MRI_PAPER = ("*Constrained Decoding of Diffusion LLMs with Context-Free Grammars* "
             "(shared/papers/constrained-decoding-diffusion-cfg-mri.md), Table 1: HumanEval-X "
             "C++ with 1/2/3 random spans of 5-100 characters removed (the protocol of our C++ "
             "groups), mean of 4 seeds; Van. / Con.- / Con. as here, but constrained by the "
             "paper's own C++ grammar")


@dataclass(frozen=True)
class Infilling:
    model: str
    open_weights: bool
    single_line: float | None
    multi_line: float | None
    random_span: float | None


# pass@1 in percent
HUMANEVAL_INFILLING = (
    Infilling("InCoder 6.7B", True, 69.0, 38.6, None),
    Infilling("FIM50 6.9B (OpenAI, FIM rate 0.5, 100B tokens)", False, 73.0, 40.6, 52.1),
    Infilling("FIM90 6.9B (OpenAI, FIM rate 0.9, 100B tokens)", False, 75.1, 44.1, 55.1),
    Infilling("code-davinci-002", False, 91.6, 69.9, 74.2),
)


@dataclass(frozen=True)
class CppSpans:
    model: str
    holes: int
    van: float
    con_minus: float
    con: float


# functional correctness (pass@1, percent) from the MRI paper's Table 1
HUMANEVAL_X_CPP_SPANS = (
    CppSpans("StarCoder2 7B", 1, 53.8, 56.1, 56.3),
    CppSpans("StarCoder2 7B", 2, 20.5, 23.7, 24.2),
    CppSpans("StarCoder2 7B", 3, 7.5, 10.3, 11.0),
    CppSpans("CodeGemma 7B", 1, 57.1, 59.6, 59.6),
    CppSpans("CodeGemma 7B", 2, 24.8, 29.0, 29.2),
    CppSpans("CodeGemma 7B", 3, 8.7, 12.6, 12.8),
    CppSpans("DeepSeek Coder 1.3B", 1, 46.5, 46.4, 47.2),
    CppSpans("DeepSeek Coder 1.3B", 2, 16.1, 18.4, 19.2),
    CppSpans("DeepSeek Coder 1.3B", 3, 4.9, 5.4, 6.5),
    CppSpans("DeepSeek Coder 6.7B", 1, 64.8, 67.1, 67.3),
    CppSpans("DeepSeek Coder 6.7B", 2, 29.8, 32.7, 33.2),
    CppSpans("DeepSeek Coder 6.7B", 3, 11.9, 13.5, 13.5),
    CppSpans("DeepSeek Coder 33B", 1, 69.8, 71.2, 71.4),
    CppSpans("DeepSeek Coder 33B", 2, 29.8, 34.0, 34.3),
    CppSpans("DeepSeek Coder 33B", 3, 12.6, 14.3, 15.4),
)
