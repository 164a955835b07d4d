"""The calculator's tests (stdlib unittest: they run in any box with python3)."""

import unittest

from calculator import add, mean


class CalculatorTest(unittest.TestCase):
    def test_add(self) -> None:
        self.assertEqual(add(2, 3), 5)

    def test_mean(self) -> None:
        self.assertEqual(mean([1, 2, 3, 6]), 3)

    def test_mean_of_nothing_is_an_error(self) -> None:
        with self.assertRaises(ValueError):
            mean([])


if __name__ == "__main__":
    unittest.main()
