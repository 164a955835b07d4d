import unittest

from greeting import fetch
from service import ready_url


class GreetingTest(unittest.TestCase):
    def test_the_service_greets(self) -> None:
        self.assertIn("hello", fetch(ready_url()))


if __name__ == "__main__":
    unittest.main()
