"""ACL 1.0 on a node, as RocketMQ's ``PlainAccessValidator``: ``guard`` (which requests
must be signed, checking, reloading), ``accounts`` and ``addresses`` (``plain_acl.yml``).
"""
