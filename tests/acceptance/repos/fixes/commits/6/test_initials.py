import unittest

from textstats import initials


class Initials(unittest.TestCase):
    def test_initials(self):
        self.assertEqual(initials("Ada Lovelace"), "AL")

    def test_one_word(self):
        self.assertEqual(initials("Ada"), "A")

    def test_lower_case_names(self):
        self.assertEqual(initials("ada lovelace"), "AL")
