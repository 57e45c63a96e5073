/* Defines no Probe. */
void NotProbe(long a) {}
