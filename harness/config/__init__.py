"""What to run: matrix.yaml (matrix), the package selectors and the index client (select, wheels), the plan of jobs."""
