import unittest

from textstats import count_lines


class CountLines(unittest.TestCase):
    def test_lines(self):
        self.assertEqual(count_lines("a\nb\n"), 2)
