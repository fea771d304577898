"""staffstore."""
