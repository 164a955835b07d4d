import unittest

from textstats import count_lines


class CountLines(unittest.TestCase):
    def test_lines(self):
        self.assertEqual(count_lines("a\nb\n"), 2)

    def test_last_line_without_newline(self):
        self.assertEqual(count_lines("a\nb"), 2)

    def test_blank_lines(self):
        self.assertEqual(count_lines("a\n\nb\n"), 3)
