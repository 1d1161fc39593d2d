"""The production command's worker class, by the name the README gives it (its code is horde/serving/gunicorn.py):

gunicorn -k horde.gunicorn_worker.HordeWorker -w 4 --worker-connections 2000 -b 0.0.0.0:7001 'horde.wsgi:app'
"""

from horde.serving.gunicorn import HordeWorker

__all__ = ["HordeWorker"]
