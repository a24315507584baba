"""Model providers behind one small protocol."""
