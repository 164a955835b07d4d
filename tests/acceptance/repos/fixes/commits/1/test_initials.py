import unittest

from textstats import initials


class Initials(unittest.TestCase):
    def test_initials(self):
        self.assertEqual(initials("Ada Lovelace"), "AL")
