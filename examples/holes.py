"""A small module with two unfinished places: `holefill fill examples/holes.py` fills them."""


def mean(xs):
    total = 0
    for x in xs:
        total += <|hole|>
    return total / len(xs)


def describe(xs):
    return {"mean": mean(xs), "count": <|hole|>}
