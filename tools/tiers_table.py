# SPDX-License-Identifier: GPL-2.0-only
"""What libtune's tiers (tools/libtune-tiers.py) and the daemon's folders
(tools/daemon-tiers.py) check the same way: a table of who uses whom."""


class TierError(Exception):
    pass


def check_uses(tiers, where, unit, usable=lambda name: True):
    """Every "uses" names a known entry that may be used, never itself, and spells out
    everything it uses through another, so that the table alone says what an entry may
    use (and a cycle shows up as an entry using itself through another)."""
    for name, t in tiers.items():
        for u in t["uses"]:
            if u not in tiers or not usable(u):
                raise TierError(f"{where}: {name} uses unknown {unit} {u}")
            if u == name:
                raise TierError(f"{where}: {name} uses itself")
            for uu in tiers[u]["uses"]:
                if uu == name:
                    raise TierError(f"{where}: cycle between {name} and {u}")
                if uu not in t["uses"]:
                    raise TierError(f"{where}: {name} uses {u}, which uses {uu}: list {uu} in {name}'s uses too")
