from greetsvc import fetch_greeting


def test_the_greeting_has_no_trailing_newline(service_url):
    assert fetch_greeting(service_url) == "hello"
