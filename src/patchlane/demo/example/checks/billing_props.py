# checks/billing_props.py — the proposal's property, as printed
import random
from billing import apply_refund  # function under test; do not reimplement it here

def prop_refund_never_exceeds_charge(seed: int, n: int = 200) -> None:
    rng = random.Random(seed)
    for i in range(n):
        charge = rng.randint(0, 10_000)
        refund = rng.randint(0, 12_000)
        result = apply_refund(charge_cents=charge, refund_cents=refund)
        assert 0 <= result.net_cents <= charge, (seed, i, charge, refund)
        assert result.rejected is (refund > charge), (seed, i, charge, refund)
