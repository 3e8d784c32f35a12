"""What tenants used: the usage report over the day totals the settles keep (store/usage.py)."""
