import unittest

from greet import greet


class Greet(unittest.TestCase):
    def test_greets(self):
        self.assertTrue(greet("Ada").startswith("Hello"))
