"""The code a user copies from the README and docs: its ```python blocks and the `hurtle ...` commands of its
```bash blocks (tests/test_readme.py runs them)."""

from __future__ import annotations

import glob
import os
import re
import shlex

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
README = os.path.join(ROOT, "README.md")


def documents() -> list[str]:
    """README.md and every docs/*.md, as paths."""
    return [README, *sorted(glob.glob(os.path.join(ROOT, "docs", "*.md")))]


def blocks(path: str, language: str) -> list[str]:
    """The fenced code blocks of `language` in a Markdown file, in order."""
    return re.findall(rf"^```{language}\n(.*?)^```", open(path).read(), re.S | re.M)


def hurtle_commands(path: str) -> list[list[str]]:
    """Each `hurtle ...` command of the file's ```bash blocks as argv (after `hurtle`): continuation lines joined,
    comments dropped, whatever comes before the command on its line (variables, a prompt, `.venv/bin/`, `srun ...`)
    and after it (`&&`, `;`) left out."""
    commands = []
    for block in blocks(path, "bash"):
        for line in block.replace("\\\n", " ").splitlines():
            words = shlex.split(line, comments=True)
            for i, word in enumerate(words):
                if word == "hurtle" or word.endswith("/hurtle"):
                    rest = words[i + 1 :]
                    end = next((j for j, w in enumerate(rest) if w in ("&&", ";", "||", "|")), len(rest))
                    commands.append(rest[:end])
                    break
    return commands
