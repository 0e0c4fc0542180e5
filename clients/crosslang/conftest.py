import pathlib
import sys

# harness.py sits beside the tests.
sys.path.insert(0, str(pathlib.Path(__file__).parent))
