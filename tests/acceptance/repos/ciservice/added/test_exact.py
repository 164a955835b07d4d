import unittest

from greeting import fetch
from service import ready_url


class ExactTest(unittest.TestCase):
    def test_the_greeting_has_no_trailing_newline(self) -> None:
        self.assertEqual(fetch(ready_url()), "hello")


if __name__ == "__main__":
    unittest.main()
