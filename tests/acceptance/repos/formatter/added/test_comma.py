import unittest

from greet import greet


class Comma(unittest.TestCase):
    def test_greets_with_a_comma(self):
        self.assertEqual(greet("Ada"), "Hello, Ada")
