"""Evaluation (paper 4.2): generators, the Table-1 summary and the HTML report."""
