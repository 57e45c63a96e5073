/* query_inst.cpp adds no calls: nothing runs at run time. */
int query_analysis_unused;
