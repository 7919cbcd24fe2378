"""Instructor-side tools: solution regions, the student-facing library, builds, grading and the course workflow.

Nothing here is imported by course_lib, and nothing here holds a solution.
"""
