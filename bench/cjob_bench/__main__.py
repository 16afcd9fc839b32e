"""``python -m cjob_bench``: the benchmark command (:mod:`cjob_bench.cli`)."""

from cjob_bench import cli

if __name__ == "__main__":
    cli.main()
