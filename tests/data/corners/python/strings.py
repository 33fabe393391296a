"""Strings of every kind, f-strings with format specs and conversions."""
width = 10
name = "holefill"
items = {"a": 1, "b": 2}


def show(value, precision=3):
    text = f"{value!r:>{width}} and {value:.{precision}f}"
    nested = f"{'-' * width}{name!s}{items['a']:03d}"
    doubled = f"{{literal}} {value = }"
    raw = rf"\d+{width}\n"
    tripled = f"""line {value}
    next {name.upper()}"""
    data = b"\x00bytes" + rb"\raw"
    joined = "implicit " "concatenation " f"{width}"
    return text, nested, doubled, raw, tripled, data, joined


def docs():
    '''A docstring with "quotes" and a \N{BULLET} name.'''
    return """triple with 'single' and "double" inside"""
