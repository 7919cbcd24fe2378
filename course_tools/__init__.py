"""Instructor-side tools: solution regions, the student-facing library, notebook authoring and builds.

Nothing here is imported by course_lib, and nothing here holds a solution.
"""
