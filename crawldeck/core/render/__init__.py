"""Headless rendering of JavaScript shells: the Chromium pool driven by Playwright, a
render session, and the memory watch of its processes (issue #24 item 2).
"""
