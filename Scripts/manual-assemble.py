#!/usr/bin/env python3
"""Turns the page swift-argument-parser's generate-manual writes into mdq(1).

    Scripts/manual-assemble.py GENERATED FRAGMENTS_DIR > mdq.1

The plugin's page has one SYNOPSIS line (`mdq [subcommand]`), the examples
inside each subcommand's description (indented 13 columns by the list they
sit in, so long lines wrap mid-command), and no ENVIRONMENT, FILES or SEE
ALSO. This keeps the generated descriptions and options, and:
- replaces the SYNOPSIS with the real forms (mdq-synopsis.mdoc);
- lifts every "Examples:" block out of the descriptions into one EXAMPLES
  section, as a literal display at the page's margin;
- replaces the generic exit status with mdq's, adds ENVIRONMENT and FILES
  (mdq-sections.mdoc) and SEE ALSO (mdq-see-also.mdoc);
- turns the blank lines the plugin leaves into paragraph breaks (mdoc warns
  about blank lines).
"""
import sys
from pathlib import Path


def assemble(generated: str, fragments: Path) -> str:
    lines = generated.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    lines = [".Pp" if line == "" else line for line in lines]

    # The real synopsis, in place of the generated one.
    start = lines.index(".Sh SYNOPSIS")
    end = lines.index(".Sh DESCRIPTION")
    synopsis = (fragments / "mdq-synopsis.mdoc").read_text().rstrip("\n").split("\n")
    lines[start:end] = synopsis

    # Every "Examples:" block, with the paragraph break after it, taken out.
    examples: list[str] = []
    kept: list[str] = []
    index = 0
    while index < len(lines):
        if lines[index] == "Examples:":
            index += 1
            block = []
            while index < len(lines) and lines[index].startswith("  "):
                block.append(lines[index][2:])
                index += 1
            if index < len(lines) and lines[index] == ".Pp":
                index += 1
            # A command already shown (mdq ls photo.png) is not repeated.
            shown = {line.split("  ")[0] for line in examples}
            block = [line for line in block if line.split("  ")[0] not in shown]
            if examples and block:
                examples.append("")
            examples.extend(block)
            # The paragraph break before "Examples:" now ends the description.
            if kept and kept[-1] == ".Pp" and index < len(lines) and lines[index].startswith(".Bl"):
                kept.pop()
            continue
        kept.append(lines[index])
        index += 1
    lines = kept

    # mdq's own exit status, environment, files, examples and see also.
    status = lines.index('.Sh "EXIT STATUS"')
    tail = (fragments / "mdq-sections.mdoc").read_text().rstrip("\n").split("\n")
    # mdoc warns about blank lines, even in a display: .sp spaces the
    # groups of examples.
    tail += [".Bd -literal"] + [line if line else ".sp" for line in examples] + [".Ed"]
    tail += (fragments / "mdq-see-also.mdoc").read_text().rstrip("\n").split("\n")
    lines[status:] = tail
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    generated = Path(sys.argv[1]).read_text()
    sys.stdout.write(assemble(generated, Path(sys.argv[2])))
