/* Probe calls a function nobody defines: the analysis object cannot be
 * linked, and atomx must say so when it builds it, not let the
 * instrumented program die at start-up ("undefined symbol"). */
void nosuch_helper(long);
void Probe(long a, long b) { nosuch_helper(a + b); }
