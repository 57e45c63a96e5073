/* Compiled on its own (cc -c -fPIC) into an object or archive that atomx
 * links into the analysis object (itest.py build_flags). */
long Helper(long a) { return a * 3; }
