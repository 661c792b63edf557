"""Evaluation (paper 4.2): generators, the ``eval_results`` rows, the Table-1 summary and the HTML report."""
