from greetsvc import fetch_greeting


def test_the_service_greets(service_url):
    assert "hello" in fetch_greeting(service_url)
