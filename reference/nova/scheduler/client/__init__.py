"""nova's clients of other services that the scheduler and the resource tracker share."""
