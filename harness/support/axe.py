"""axe-core, Deque's accessibility engine, vendored at the Makefile's AXE_CORE (`make axe-core`): its
file, and its violations on a page as it is now."""

from pathlib import Path

AXE = Path(__file__).resolve().parents[2] / "vendor" / "axe-core" / "axe.min.js"


def violations(page) -> list:
    """axe-core's violations on the page as it is now, every rule of every impact: (rule, impact,
    how many elements, the first three's selectors and what to fix)."""
    page.wait_for_timeout(300)  # widgets/access.js labels new views on the next animation frame
    if not page.evaluate("() => !!window.axe"):
        page.add_script_tag(content=AXE.read_text())
    found = page.evaluate(
        """async () => (await axe.run(document)).violations.map(v => [v.id, v.impact, v.nodes.length,
            v.nodes.slice(0, 3).map(n => n.target.join(' ') + ': ' + (n.failureSummary || ''))])"""
    )
    return [tuple(v) for v in found]
