import unittest

from textstats import count_words


class CountWords(unittest.TestCase):
    def test_words(self):
        self.assertEqual(count_words("one two three"), 3)

    def test_empty(self):
        self.assertEqual(count_words(""), 0)
