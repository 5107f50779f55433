"""The sandbox's data: the book of generated matches and the simulation that changes it over time."""
