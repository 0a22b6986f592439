"""``python -m sklcalib`` runs the same command line as the ``sklcalib`` script."""

from sklcalib.cli import main

if __name__ == "__main__":
    raise SystemExit(main())
