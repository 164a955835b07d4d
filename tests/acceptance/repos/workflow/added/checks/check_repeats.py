import unittest

from roman import to_roman


class Repeats(unittest.TestCase):
    def test_repeats(self):
        self.assertEqual([to_roman(n) for n in (3, 30, 38)], ["III", "XXX", "XXXVIII"])
