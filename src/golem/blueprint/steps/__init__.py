"""The steps a blueprint's nodes run: host actions, box commands, agents, gates, loops."""
