"""How the package launches a headless browser for screenshots and browser tests (Debian's chromium).

A base module: the patient annotation page, the halo gallery and the board site all take their
screenshots with the same executable and flags, and none of those layers imports another for them.
"""

CHROMIUM = "/usr/bin/chromium"
#: No sandbox of its own (it runs as root in containers), no GPU, no traffic of its own to the network.
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
