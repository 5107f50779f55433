"""Every product this template generates: the combinations of its answers, and what each one's name is.

The answers `demo`, `sandbox` and `token_sharing` make eight products; the one of all defaults is made with `--defaults`
alone. Their names are any text (one has an emoji, one is in a script with no Latin letter): each is written
into the product as valid UTF-8. DIVERSE is the product that differs most from this repository (no demo, the
sandbox for tests only, the site's one token): it passes its whole `make test`; the others their `make check`.
"""

from __future__ import annotations

from dataclasses import dataclass

DEFAULT_NAME = "Sports token starter"


@dataclass(frozen=True)
class Product:
    """One combination of the template's answers."""

    demo: bool
    sandbox: str
    token_sharing: str
    name: str

    @property
    def key(self) -> str:
        return f"{'demo' if self.demo else 'no-demo'}-{self.sandbox}-{self.token_sharing}"

    @property
    def defaults(self) -> bool:
        return self.demo and self.sandbox == "embedded" and self.token_sharing == "login"

    @property
    def answers(self) -> dict[str, str]:
        """The `--data` of `copier copy`: none for the defaults (`--defaults` alone)."""
        if self.defaults:
            return {}
        return {
            "project_name": self.name,
            "demo": str(self.demo).lower(),
            "sandbox": self.sandbox,
            "token_sharing": self.token_sharing,
        }


PRODUCTS = {
    product.key: product
    for product in (
        Product(demo=False, sandbox="tests", token_sharing="site", name="Acme Live Scores ⚽"),  # every page renders it
        Product(demo=False, sandbox="tests", token_sharing="login", name="Hoops 🏀 League"),
        Product(demo=False, sandbox="embedded", token_sharing="site", name="Ligue des Étoiles"),
        Product(
            demo=False, sandbox="embedded", token_sharing="login", name="サッカー速報"
        ),  # its distribution: "product"
        Product(demo=True, sandbox="tests", token_sharing="site", name="Court & Pitch"),
        Product(demo=True, sandbox="tests", token_sharing="login", name="Matchday"),
        Product(demo=True, sandbox="embedded", token_sharing="site", name="Scoreline"),
        Product(demo=True, sandbox="embedded", token_sharing="login", name=DEFAULT_NAME),  # `--defaults`
    )
}
DIVERSE = PRODUCTS["no-demo-tests-site"]
# The product that `copier update` brings a later template commit into; its `make check` runs after the update.
UPDATED = PRODUCTS["no-demo-embedded-login"]
