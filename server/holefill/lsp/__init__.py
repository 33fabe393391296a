"""The language-server layer: documents kept in sync with the editor, hole detection, and (later)
the pygls server with inline completion and the "Fill holes" code action (DESIGN.md §3, §8)."""
