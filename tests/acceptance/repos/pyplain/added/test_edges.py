import unittest

from wordcount import count_words


class Edges(unittest.TestCase):
    def test_empty(self):
        self.assertEqual(count_words(""), 0)

    def test_newlines(self):
        self.assertEqual(count_words("one\ntwo"), 2)
