"""The lanes: each turns evidence into a report with a ``status`` the verdict reads."""
