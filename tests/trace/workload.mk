# make -j2 -f workload.mk G=GZIP B=BZIP2 IN=FILE: two instrumentable
# programs at once, each through a shell (the recipes redirect), for
# trace.workload.make (workload.py).  Nothing on stdout: which recipe ends
# first differs between runs.
all: gz bz2
gz:
	@$(G) -c $(IN) >/dev/null
bz2:
	@$(B) -c $(IN) >/dev/null
.PHONY: all gz bz2
