"""The fixture repositories under repos/ are data: their tests are not golem's."""

collect_ignore_glob = ["repos/*"]
