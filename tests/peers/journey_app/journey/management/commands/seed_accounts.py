from django.core.management.base import BaseCommand

from journey.seed import seed, write_csv


class Command(BaseCommand):
    help = "Makes the test accounts user0001..userNNNN (password pw-<name>) and writes their CSV."

    def add_arguments(self, parser):
        parser.add_argument("count", type=int, help="how many accounts")
        parser.add_argument("--csv", help="also write the accounts here (username,password)")

    def handle(self, *args, count, csv=None, **options):
        names = seed(count)
        if csv:
            write_csv(csv, names)
        self.stdout.write(f"{len(names)} accounts")
