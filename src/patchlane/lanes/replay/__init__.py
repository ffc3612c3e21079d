"""The replay lane: a bounded, hashed slice and a receipt that cannot be faked."""
