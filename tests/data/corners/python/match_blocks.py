"""Match statements at several depths, with guards, class patterns and nested blocks."""
from dataclasses import dataclass


@dataclass
class Point:
    x: int
    y: int


def where(p):
    match p:
        case Point(x=0, y=0):
            return "origin"
        case Point(x=0, y=y) if y > 0:
            return "north"
        case Point(x=x, y=0):
            return f"east {x}"
        case [a, b, *rest]:
            return len(rest)
        case {"kind": kind, **others}:
            return kind
        case str() | bytes():
            return "text"
        case _:
            return None


class Router:
    def route(self, command):
        for part in command.split():
            match part.lower():
                case "go" | "walk":
                    self.moving = True
                case "stop":
                    self.moving = False
                    break
                case other:
                    match len(other):
                        case 0:
                            continue
                        case n if n > 10:
                            raise ValueError(other)
        return self.moving
