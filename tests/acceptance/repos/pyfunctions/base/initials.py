def initials(name):
    """The initials of ``name``, upper case: "ada lovelace" gives "AL"."""
    return "".join(word[0] for word in name.split(" "))
