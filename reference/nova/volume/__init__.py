"""Nova's view of Cinder (``nova/volume``): the volume API client nova-compute uses."""
