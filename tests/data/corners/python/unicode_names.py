"""Non-ASCII identifiers (PEP 3131), strings and comments: größe, 数据, naïve, ℕ."""
import math

größe = 3
数据 = [1, 2, 3]
naïve_mean = sum(数据) / len(数据)


class Straße:
    """Ein Weg mit Länge."""

    def __init__(self, länge: float, café="Café ☕"):
        self.länge = länge
        self.café = café

    def fläche(self, breite=größe):
        # Fläche = Länge × Breite
        return self.länge * breite

    def __repr__(self):
        return f"Straße({self.länge!r}, {self.café!r:>{größe}})"


def πr2(r):
    return math.pi * r ** 2


ergebnis = {name: πr2(wert) for name, wert in zip("αβγ", 数据)}
