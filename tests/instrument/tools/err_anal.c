void Probe(long a, long b) {}
