import unittest

from roman import to_roman


class ToRoman(unittest.TestCase):
    def test_exact_values(self):
        self.assertEqual([to_roman(n) for n in (10, 9, 5, 4, 1)], ["X", "IX", "V", "IV", "I"])
