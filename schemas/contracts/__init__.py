"""The stage contracts: per stage family the pyarrow schema of each stage and the great-expectations suites
that gate it (``validation.FrameSuite``)."""
